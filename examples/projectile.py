"""Aim a projectile with drag by gradient descent through its simulation.

The flight is integrated with explicit Euler steps in a ``while y > 0`` loop, so the number
of steps depends on the launch parameters; srcgrad differentiates through the loop (the
trip count and overwritten state are on its tape). The landing point is refined by linear
interpolation over the last step, which keeps the range a smooth function of the inputs.
Newton's method on the launch speed then hits a target distance in a few steps; the
derivative with respect to the angle is printed too.
"""
import math

import srcgrad

G = 9.81
DRAG = 0.02  # quadratic drag coefficient per unit mass
DT = 0.01


def landing_distance(angle, speed):
    vx = speed * math.cos(angle)
    vy = speed * math.sin(angle)
    x, y = 0.0, 0.0
    prev_x, prev_y = x, y
    while y >= 0.0:
        prev_x, prev_y = x, y
        v = math.sqrt(vx * vx + vy * vy)
        vx = vx - DT * DRAG * v * vx
        vy = vy - DT * (G + DRAG * v * vy)
        x = x + DT * vx
        y = y + DT * vy
    # interpolate where the last step crossed y = 0
    frac = prev_y / (prev_y - y)
    return prev_x + frac * (x - prev_x)


def trajectory(angle, speed):
    """The flight's points (the same integration, for the plot)."""
    vx, vy = speed * math.cos(angle), speed * math.sin(angle)
    x, y = 0.0, 0.0
    points = [(x, y)]
    while y >= 0.0:
        v = math.sqrt(vx * vx + vy * vy)
        vx = vx - DT * DRAG * v * vx
        vy = vy - DT * (G + DRAG * v * vy)
        x, y = x + DT * vx, y + DT * vy
        points.append((x, y))
    return points


def plot(shots, target):
    from _plots import save_plot

    def draw(ax):
        for k, (angle, speed) in enumerate(shots):
            xs, ys = zip(*trajectory(angle, speed))
            ax.plot(xs, ys, label=f"step {k}: {speed:.2f} m/s", alpha=0.4 + 0.6 * (
                k + 1) / len(shots))
        ax.axvline(target, color="k", linestyle=":", linewidth=1)
        ax.set_ylim(bottom=0.0)
        ax.set_xlabel("distance (m)")
        ax.set_ylabel("height (m)")
        ax.legend(fontsize=7)
    save_plot("projectile_trajectories.png", draw)


def main(target=60.0):
    # d(distance)/d(angle, speed), by source transformation of the simulation above
    d_dist = srcgrad.grad(landing_distance, wrt=("angle", "speed"), preserve_result=True)
    angle, speed = math.radians(40.0), 20.0
    print(f"target distance {target} m")
    shots = []
    for step in range(20):
        shots.append((angle, speed))
        dist, (g_angle, g_speed) = d_dist(angle, speed)
        print(f"step {step:2d}: angle {math.degrees(angle):6.2f} deg, speed {speed:6.2f} m/s"
              f" -> lands at {dist:8.3f} m  (d/d angle {g_angle:8.3f}, d/d speed {g_speed:6.3f})")
        if abs(dist - target) < 1e-6:
            break
        # Newton's method on speed for distance(angle, speed) = target, at a fixed angle
        speed += (target - dist) / g_speed
    eps = 1e-6
    fd = (landing_distance(angle, speed + eps) - landing_distance(angle, speed - eps)) / (2 * eps)
    print(f"check: d/d speed by finite differences {fd:.6f}, by srcgrad "
          f"{d_dist(angle, speed)[1][1]:.6f}")
    assert abs(landing_distance(angle, speed) - target) < 1e-3
    plot(shots, target)


if __name__ == "__main__":
    main()
