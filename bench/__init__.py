"""Argue's benchmark: the whole app driven over HTTP, with figures.

Run ``python -m bench --help``.
"""
