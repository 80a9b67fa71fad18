"""The Android driver: a phone over adb (adbutils), its apps, key codes and text input."""
