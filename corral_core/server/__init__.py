"""The environment REST server: `create_app`, approval gates, `EmbeddedServer`, `serve_main`."""

from corral_core.server.app import create_app
from corral_core.server.approvals import EventingGate, PolicyGate, QueueGate
from corral_core.server.embedded import EmbeddedServer

__all__ = ["EmbeddedServer", "EventingGate", "PolicyGate", "QueueGate", "create_app"]
