"""The desktop driver: an X11 desktop through mss (screenshots), pyautogui/xdotool (input) and AT-SPI
(the tree).
"""
