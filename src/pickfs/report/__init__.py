"""Renderers: pure functions from stored results to text or bytes."""
