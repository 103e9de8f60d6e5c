"""A finding's proof: the links that make it certain, each checked on the plugin's own code (see docs/doctor.md)."""
