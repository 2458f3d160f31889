"""Pictures and pages from what the stages computed (matplotlib lives here and nowhere else)."""
