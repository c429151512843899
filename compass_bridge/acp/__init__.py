"""Any Agent Client Protocol agent (`agent-bridge --protocol acp`)."""
