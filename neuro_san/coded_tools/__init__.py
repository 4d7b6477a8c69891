"""Coded tools of the bundled example networks (found as AGENT_TOOL_PATH/<network>/)."""
