"""Bounds for tests that wait on something: they only limit a failing test, so they are generous (a
loaded, shared machine may be slow; a passing test returns as soon as its answer arrives)."""

HTTP_TIMEOUT = 60.0  # seconds an httpx client in a test waits for a response (httpx's default is 5)
