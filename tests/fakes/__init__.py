"""Reusable test fakes (loopback servers, stand-ins for external services)."""
