"""The episode core: tools, environments, the loop, context policies, trajectories and training rows."""
