"""The ensemble learners, one folder per algorithm family: each holds its config (registered
under its ``method=`` name), its pure ``fit(config, ...)``, its params pytree and its
``describe``.

* :mod:`~dpjax.ensembles.random_trees`: DP random decision trees and the RF-L / RF-E baselines
  (``"random_trees"``, ``"rf_laplace"``, ``"rf_exponential"``);
* :mod:`~dpjax.ensembles.newton`: private Newton boosting (``"boosted"``);
* :mod:`~dpjax.ensembles.malpha`: Mα-boost (``"malpha"``);
* :mod:`~dpjax.ensembles.smooth_boost`: private smooth boosting (``"smooth_boost"``).

Rule lists take the same shape in :mod:`dpjax.rules`. Importing this package imports no family
(import the one you use; :mod:`dpjax.learners` imports each on first use).
"""
