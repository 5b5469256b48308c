"""Model backends behind one interface (see `base`).

Importing the package registers the built-in wire formats (`wire`), so every lookup sees them."""

from . import anthropic_wire, openai_wire
from .wire import register_wire

register_wire(anthropic_wire.WIRE)
register_wire(openai_wire.WIRE)
