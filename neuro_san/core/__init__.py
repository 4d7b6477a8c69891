"""Transport-free types shared by every layer: messages, errors, the host interface."""
