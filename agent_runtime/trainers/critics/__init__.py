"""Critics that label traces: the step critic, the trajectory critic, their labels and the judge that
runs them.
"""
