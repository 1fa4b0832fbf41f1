"""L-BFGS per block of weights (:class:`BlockLBFGS`) and its contract, :class:`BlockObjective`.
"""

import numpy as np

from skfcrf.solvers._lbfgs import CurvaturePairs
from skfcrf.solvers._monitor import SolverResult

__all__ = ["BlockObjective", "BlockLBFGS"]


def side_by_side(blocks):
    """The blocks' weights side by side: ``(perm, spans)``, ``perm`` every block's
    indices in turn (``theta[perm]`` gathers them) and ``spans[b]`` the slice of
    block ``b`` in that gather, its weights in the block's order."""
    perm = (np.concatenate([np.asarray(blk, dtype=np.int64) for blk in blocks])
            if len(blocks) else np.zeros(0, np.int64))
    ends = np.cumsum([len(blk) for blk in blocks], dtype=np.int64)
    return perm, [slice(int(e) - len(blk), int(e)) for blk, e in zip(blocks, ends)]


class BlockObjective:
    """The contract of :class:`BlockLBFGS`: a loss that is a sum of one function per
    block of weights, the blocks disjoint.

    Subclasses (such as the independent chains' likelihoods,
    :class:`~skfcrf.objectives.IndependentChains`) provide

    ``blocks``
        List of int index arrays into ``theta``, one per block.
    ``block_losses_gradient(theta, active=None) -> (losses, grad)``
        Per block its loss, and the gradient of their sum; ``active`` (bool per
        block): only those blocks are evaluated, the others' losses are NaN and
        their gradient zero.
    ``block_costs()``
        Estimated cost of evaluating each block alone (any unit), or None when
        unknown (the default): the blocks then get equal iteration budgets.
    ``loss_gradient(theta)``
        The summed loss, as every objective has.
    """

    blocks = ()

    def block_losses_gradient(self, theta, active=None):
        raise NotImplementedError

    def block_costs(self):
        return None


class BlockLBFGS:
    """L-BFGS on a loss that is a sum of functions of disjoint weight blocks.

    For a :class:`BlockObjective`, such as the independent chains'
    likelihoods: every block keeps its own L-BFGS memory,
    step length and stopping test, and all blocks move in the same
    evaluations (one evaluation gives every block's loss, so their line
    searches run in lockstep).  One L-BFGS over the summed loss shares one
    step length and one curvature estimate among the blocks, and the small
    ones converge slowly: on the dictation benchmark, 150 iterations over the
    sum leave the 7-label sentence chain at WindowDiff .026, where 150 on that
    chain alone reach .018.

    Budget: ``max_iter`` iterations for a block that costs more than half as
    much per evaluation as the costliest (``objective.block_costs()``, when
    the objective knows them); a block that costs at most ``1/k`` of the costliest
    may run ``k * max_iter``, no more work than the costliest block's
    ``max_iter`` (whole multiples: a block is not run on for a fraction of
    the stage).  Once the costlier blocks have stopped, the evaluations are
    of the remaining blocks alone (``block_losses_gradient(theta, active)``).
    On the dictation benchmark the 7-label sentence chain, evaluated alone,
    costs a quarter of the 72-label subsection chain; 100 iterations leave
    its loss at 15 times its optimum and its WindowDiff at .019, where
    convergence reaches .017.  ``equal_work=False``: ``max_iter`` for every
    block.

    Line search: backtracking from the unit step (the first iteration from
    ``1 / |g|``) under the Armijo condition, each time to the minimiser of the
    quadratic that fits the loss, its slope and the failed trial (kept within a
    tenth and a half of the step), up to ``max_backtracks`` times; a block whose
    search fails keeps its weights and stops.  A block converges when its relative
    loss reduction or its largest
    gradient component falls below ``tol`` (scipy's ``ftol``/``gtol`` tests).
    """


    def __init__(self, memory=3, max_iter=100, tol=1e-5, max_backtracks=20, equal_work=True):
        self.memory = memory
        self.max_iter = max_iter
        self.tol = tol
        self.max_backtracks = max_backtracks
        self.equal_work = equal_work

    def block_iterations(self, objective):
        """Iterations each block may run (see the class docstring)."""
        n_blocks = len(objective.blocks)
        costs = objective.block_costs() if self.equal_work else None
        if costs is None:
            return np.full(n_blocks, self.max_iter, dtype=np.int64)
        costs = np.maximum(np.asarray(costs, dtype=np.float64), 1e-300)
        return self.max_iter * np.floor(costs.max() / costs).astype(np.int64)

    def solve(self, objective, theta0, monitor):
        if not isinstance(objective, BlockObjective):
            raise TypeError(f"BlockLBFGS minimises a BlockObjective, not a "
                            f"{type(objective).__name__}")
        blocks = objective.blocks
        n_blocks = len(blocks)
        caps = self.block_iterations(objective)
        # the blocks' weights side by side (block b at spans[b]), so that the
        # iteration's vector work runs on slices; each evaluation scatters them into
        # the full weights (those in no block kept where theta0 has them) and gathers
        # the gradient back -- every block's vector keeps its order, so its sums are
        # those of the block's weights gathered by index
        perm, spans = side_by_side(blocks)
        base = np.array(theta0, dtype=np.float64)
        # the last evaluation's block vector and its full weights: after an iteration
        # whose blocks all kept their trial step they are the new weights' (the line
        # search mutates its trial vector between evaluations, so only full() reuses)
        last = [None, None]

        def scatter(x):
            out = base.copy()
            out[perm] = x
            return out

        def full(x):
            return last[1] if x is last[0] else scatter(x)

        def evaluate(x, active=None):
            last[0], last[1] = x, scatter(x)
            f_eval, g_eval = objective.block_losses_gradient(last[1], active)
            return f_eval, g_eval[perm]

        x = base[perm]
        f, g = evaluate(x)
        pairs = [CurvaturePairs(self.memory) for _ in range(n_blocks)]
        active = np.array([np.abs(g[sl]).max(initial=0.0) > self.tol for sl in spans])
        failed = np.zeros(n_blocks, dtype=bool)
        capped = np.zeros(n_blocks, dtype=bool)
        n_iter = 0
        for it in range(1, int(caps.max(initial=0)) + 1):
            capped |= active & (caps < it)
            active &= caps >= it
            if not active.any():
                break
            directions, steps, slopes = {}, np.zeros(n_blocks), np.zeros(n_blocks)
            for b in np.flatnonzero(active):
                gb = g[spans[b]]
                if pairs[b]:
                    d = pairs[b].direction(gb)
                    steps[b] = 1.0
                else:
                    d = -gb
                    steps[b] = 1.0 / max(np.linalg.norm(gb), 1e-300)
                if not gb @ d < 0:                     # not a descent direction: restart
                    pairs[b].clear()
                    d = -gb
                    steps[b] = 1.0 / max(np.linalg.norm(gb), 1e-300)
                directions[b], slopes[b] = d, gb @ d
            trial = x.copy()
            pending = active.copy()
            f_new, g_new = f.copy(), g.copy()
            for _ in range(self.max_backtracks + 1):
                for b in np.flatnonzero(pending):
                    trial[spans[b]] = x[spans[b]] + steps[b] * directions[b]
                f_eval, g_eval = evaluate(trial, None if pending.all() else pending)
                ok = pending & np.isfinite(f_eval) & (f_eval <= f + 1e-4 * steps * slopes)
                for b in np.flatnonzero(ok):
                    f_new[b], g_new[spans[b]] = f_eval[b], g_eval[spans[b]]
                pending &= ~ok
                if not pending.any():
                    break
                # minimiser of the quadratic through f, the slope and f_eval, kept
                # within [0.1, 0.5] of the step (halving when f_eval is not finite)
                with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                    curve = f_eval - f - steps * slopes
                    quad = -slopes * steps ** 2 / (2.0 * curve)
                quad = np.where(np.isfinite(quad), quad, 0.5 * steps)
                steps[pending] = np.clip(quad, 0.1 * steps, 0.5 * steps)[pending]
            for b in np.flatnonzero(pending):          # line search failed: keep the weights
                trial[spans[b]] = x[spans[b]]
                active[b], failed[b] = False, True
                last[0] = None                         # trial is not what was evaluated
            for b in np.flatnonzero(active):
                sl = spans[b]
                s_vec, y_vec = trial[sl] - x[sl], g_new[sl] - g[sl]
                sy = float(s_vec @ y_vec)
                if sy > 1e-10 * (s_vec @ s_vec):
                    pairs[b].add(s_vec, y_vec, sy)
                reduction = (f[b] - f_new[b]) / max(abs(f[b]), abs(f_new[b]), 1.0)
                if reduction <= self.tol or np.abs(g_new[sl]).max(initial=0.0) <= self.tol:
                    active[b] = False
            x, f, g = trial, f_new, g_new
            n_iter = it
            if monitor.report(full(x), f.sum()):
                return SolverResult(full(x), it, False, "stopped by the callback")
        capped |= active        # still active after the last iteration
        if capped.any():
            return SolverResult(full(x), n_iter, False,
                                f"stopped at max_iter={self.max_iter} iterations (blocks "
                                f"{np.flatnonzero(capped).tolist()} at their budgets "
                                f"{caps[capped].tolist()})", at_max_iter=True)
        return SolverResult(full(x), n_iter, not failed.any(), self._message(failed))

    @staticmethod
    def _message(failed):
        if failed.any():
            return f"the line search failed for blocks {np.flatnonzero(failed).tolist()}"
        return "every block converged"
