"""Helpers of tests/test_methods_changing_objects.py, in a module of their own that does
not name the classes whose objects they are passed (as a library of the user's would)."""


def set_b(m, v):
    m.set_b(v)


def first(m, v):
    m.put_first(v)


def push(m, v):
    m.push(v)


def deeper(m, v):
    set_b(m, v)


def look(m, v):
    m.times(v)


def apply(m, v):
    return m.times(v)


def make(cls):
    return cls()


def set_b_of_held(m, v):
    m.inner.set_b(v)


def set_b_of_alias(m, v):
    held = m.inner
    held.set_b(v)


def set_b_of_each(ms, v):
    for m in ms:
        m.set_b(v)


def set_b_of_item(d, v):
    d["m"].set_b(v)


def set_b_of_passed(m, v):
    set_b(m.inner, v)


def look_at_held(m, v):
    m.inner.times(v)
    return m.inner.times(v)
