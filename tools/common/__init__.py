"""Numerics shared by more than one tool."""
