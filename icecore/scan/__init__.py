"""Scan planning and its pieces: tasks, the delete index, Puffin deletion vectors, the planner."""
