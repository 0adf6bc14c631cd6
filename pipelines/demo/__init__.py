"""Realistic demo raw data for every source, with the real-world variations and bad records."""
