"""Checks for flash.py."""
