"""Internal: see framework/__init__.py for the public face."""
