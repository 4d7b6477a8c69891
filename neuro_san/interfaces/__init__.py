"""Interfaces that agent authors' code implements or receives (neuro-san compatible)."""
