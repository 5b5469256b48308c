"""Prices, token usage arithmetic and spend reservations: the money layer below the models."""
