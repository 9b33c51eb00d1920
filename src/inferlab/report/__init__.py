"""Reads the store only; turns runs into comparisons and reports."""
