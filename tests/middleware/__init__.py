"""The middleware over real HTTP, whatever the surface: handlers, passthroughs, faults, hostile streams."""
