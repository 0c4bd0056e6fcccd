"""Agent sessions: a live browser context on the fleet, driven one command at a time."""
