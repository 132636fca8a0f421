"""Routers: parent-side plugins that send some items to child processes of one kind."""
