# srcgrad: forward and backward sweeps of user_call (_inputs.py:41), with respect to x
# names srcgrad binds:
#   _rt = srcgrad.runtime
#   _helper_adj = the sweeps of _helper() (_inputs.py:37), with respect to a, b
#   _helper_adj_a = the sweeps of _helper() (_inputs.py:37), with respect to a

def user_call_fwd(x):
    # forward sweep
    y, _s1 = _helper_adj_a.fwd(x, 2.0)
    _t1, _s2 = _helper_adj.fwd(y, x)
    return _t1, (x, _s1, _s2)


def user_call_bwd(_saved, b_t1):
    # backward sweep
    x, _s1, _s2 = _saved
    # _inputs.py:43  return _helper(y, x)
    _t2 = _helper_adj.bwd(_s2, b_t1)
    by = _t2[0]
    bx = _t2[1]
    del _t2
    # _inputs.py:42  y = _helper(x, 2.0)
    _t3 = _helper_adj_a.bwd(_s1, by)
    del by
    bx = _rt.add(bx, _t3[0])
    del _t3
    return (_rt.densify(bx, x),)
