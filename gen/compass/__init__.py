"""Generated from proto/ by scripts/generate. DO NOT EDIT."""
