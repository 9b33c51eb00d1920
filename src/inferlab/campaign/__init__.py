"""Orchestration: the only layer that combines servers, load and (later) the store."""
