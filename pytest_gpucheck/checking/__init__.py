"""The toolkit a check uses: tolerance rules, guard bands, launch configurations, views,
strategies, assertions, randomness tests, and the hypothesis profiles.

Framework-free: each module imports a framework only through the backends.  The
public names a test or an implementation needs are also importable from
:mod:`pytest_gpucheck` itself (``LaunchConfig``, ``GuardedBuffer``, ...).
"""
