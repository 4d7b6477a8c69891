"""neuro-san-studio's applications, native: persistent memory (file and mem0 backends),
the checklist, skills and the Agent Network Designer family.

They are middleware classes studio's network files name (``middleware.…``), built on
neuro-san's middleware interface (:mod:`neuro_san.middleware.interface`) and plugged into
both halves of the middleware registry by :func:`neuro_san.studio.plugin.register`, which
the composer calls (``neuro-san serve`` and ``validate``). Nothing below this package
imports it: loading a network file that names none of these classes never reads studio's
or mem0's settings.

- ``config``: the load-time settings of every class (and ``CLASSES``, the loader's entries);
  ``mem0_settings``: the mem0 backend's package and ``MEM0_*`` checks.
- ``memory`` + ``memory_store`` + ``memory_mem0``, ``checklist``, ``skills``: the classes.
- ``designer_*``: the Agent Network Designer (definition, validation, persistence and
  what they share: files, instructions, loading, reservations).
- ``plugin``: the registration.
"""
