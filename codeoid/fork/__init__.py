"""Forking a codeoid session into a new one, on Claude Code or another agent CLI (DESIGN.md section 9)."""
