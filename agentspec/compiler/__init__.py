"""The compiler: load → parse → check → (lower → emit). One stage per module."""
