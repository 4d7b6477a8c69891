"""A small compatibility surface at neuro-san's ``neuro_san.internals`` import paths.

neuro-san-studio's coded tools import a few of neuro-san's internal classes. Only those
whose behaviour this server reproduces exist here (written for this server, not copied):

- ``neuro_san.internals.graph.activations.branch_activation.BranchActivation``: a coded
  tool that also subclasses it is built with neuro-san's five constructor arguments and
  can call the agents of its network with ``await self.use_tool(name, args, sly_data)``.

Any other ``neuro_san.internals`` module is absent on purpose: a coded tool importing
one fails to load, and the call's error names the module (docs/compatibility.md).
"""
