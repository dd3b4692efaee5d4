"""Trusted stand-ins for the exercise modules, used to grade each exercise in isolation.

Each module here has the student-facing API of the exercise module of the same name, built
from PyTorch built-ins where one exists (so it reveals no more than PyTorch's docs do). The
kit's tests prove each one equal to solutions/.
"""
