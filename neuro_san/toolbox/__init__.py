"""Toolbox tools: neuro-san's ``toolbox`` agent key and toolbox info files, served natively.

An agent written ``{"name": "now", "toolbox": "get_current_date_time", "args": {…}}`` takes
its class, description and parameters from the toolbox: the default toolbox
(``defaults.py``) deep-merged with at most one user file, named by the network's
``toolbox_info_file`` key or else ``AGENT_TOOLBOX_INFO_FILE``. The network builder turns
such an agent into an ordinary coded tool when the network loads (``resolve.py``, given
the loader's file reader: this package sits below the network package); an
entry this server cannot serve (a LangChain tool or toolkit) is refused then, with the
network file, the key path and the reason.
"""
