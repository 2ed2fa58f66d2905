"""
Auditing a privacy claim: score distributions of the canary test
================================================================

:func:`skdp.audit.audit` fits a DP estimator many times on two neighbouring datasets (a canary on the
norm boundary, and its mirror image) and asks how well the fitted models tell them apart. Left: ``dp_gd``
as shipped, at a claimed epsilon = 2 — the two score distributions overlap as much as the claim requires,
and the empirical lower bound stays below 2. Right: the positive control, the same fits with a quarter of
the noise — the distributions separate and the audit reports a violation. (800 fits per world each.)
"""

import matplotlib.pyplot as plt

from skdp.audit import audit_solvers

(honest,) = audit_solvers(2.0, 1e-5, n_fits=800, solvers=["dp_gd"])
(broken,) = audit_solvers(2.0, 1e-5, n_fits=800, solvers=["dp_gd"], noise_multiplier=0.25)
print(honest)
print(broken)

fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
honest.plot(ax=axes[0])
broken.plot(ax=axes[1])
axes[0].set_title(f"as shipped: epsilon >= {honest.epsilon_lower_bound:.2f} (claimed 2)", fontsize=9)
axes[1].set_title(f"quarter noise: epsilon >= {broken.epsilon_lower_bound:.2f} (claimed 2)", fontsize=9)
fig.tight_layout()
plt.show()
