"""Ground truth on a GPU: load images with the driver in child processes and compare with the
engine's prediction (``verify``).

``protocol`` is the wire format between parent and child, ``child`` the process that calls
``cuModuleLoadData``, ``runner`` keeps children alive and turns a hang or a crash into one result,
``compare`` plans the loads for a file and judges each against the prediction.
"""
