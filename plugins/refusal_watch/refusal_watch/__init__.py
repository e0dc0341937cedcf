"""refusal-watch: makes every model refusal visible the moment it streams."""
