"""The batch stepper's compiled loop (:mod:`.batch` drives it): robot i's kernel arrays and work buffers
reach it as the addresses of their structs (:mod:`.kernel_data`), cast back to the struct pointer type, and
each robot is advanced by :func:`~.kernels_rk4.integrate_rk4`, the function :class:`~.simulator.Simulator`
uses for one robot (no physics of its own here)."""
from __future__ import annotations

from numba import njit
from numba.core.extending import intrinsic

from tensegrity_engine.dynamics.kernel_data import DataPtrType
from tensegrity_engine.dynamics.kernels import OK, InputParams
from tensegrity_engine.dynamics.kernels_rk4 import integrate_rk4

TABLE_MODE = 2            # InputParams.mode of a piecewise-linear table (dynamics/inputs.py)


@intrinsic
def struct_at(typingctx, address, like):
    """The struct pointer at ``address`` (int64), of the same type as ``like`` (a kernel-data pointer)."""
    if not isinstance(like, DataPtrType):
        return None

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(like))
    return like(address, like), codegen


@njit(cache=True, _nrt=False)
def advance_batch(p_addr, w_addr, p0, w0, active, t, Y, V, h, t_out, mode, sin_par, tab_t, tab_u, Fext, zeta_scale,
                  node_damp, bar_tol, o_X, o_Xd, o_T, o_L, o_u, o_lam, stats, status):
    """Advance every robot i with ``active[i]`` from t[i] to t_out[i, 0] (:func:`integrate_rk4` with robot i's
    kernel arrays at ``p_addr[i]`` and work at ``w_addr[i]``; ``p0``/``w0``: any robot's, for their type);
    status[i] gets its status code, o_*[i] its sample at the end."""
    for i in range(p_addr.shape[0]):
        if active[i] == 0:
            continue
        p = struct_at(p_addr[i], p0)
        w = struct_at(w_addr[i], w0)
        inp = InputParams(mode[i], sin_par, 0.0, 0.0, 0.0, tab_t[i], tab_u[i])
        status[i] = integrate_rk4(p, t[i], Y[i], V[i], h, t_out[i], inp, Fext[i], zeta_scale, node_damp[i], bar_tol,
                                  w, o_X[i], o_Xd[i], o_T[i], o_L[i], o_u[i], o_lam[i], stats[i])
        if status[i] == OK:
            t[i] = t_out[i, 0]
