"""``--gpu-sanitize``: the items of GPU backends run under NVIDIA's compute-sanitizer.

``plugin`` is the feature plugin (the option, finding the tool and checking its version,
which items are sanitized and with which tools, the worker-side synchronisation);
``router`` runs those items in sanitized workers, built on the process layer's face;
``log`` reads the sanitizer's log (the parent's router and the sanitized child read it
the same way).
"""
