/*
 * A CAD host's loop over Tenon's C ABI, in the order a workbench does it: open an
 * assembly, solve, read placements back, change a dimension and solve again, drag a
 * part, diagnose, and show every failure's message. Built and run by the C ABI's tests
 * (crates/tenon-capi/tests/c_programs.rs), so it stays working.
 *
 *     cc -I crates/tenon-capi/include examples/c/host_loop.c \
 *        target/release/libtenon_capi.a -lm -lpthread -ldl -o host_loop
 *     ./host_loop fixtures/slider-crank.json
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tenon.h"

/* Prints the last error after a failed call; returns whether the call succeeded. */
static int ok(TenonStatus status, const char *what) {
    if (status == TENON_STATUS_OK) return 1;
    size_t needed = 0;
    tenon_last_error(NULL, 0, &needed);
    char *message = malloc(needed + 1);
    if (message && tenon_last_error(message, needed + 1, &needed) == TENON_STATUS_OK) {
        fprintf(stderr, "%s: status %d: %s\n", what, (int)status, message);
    }
    free(message);
    return 0;
}

static void show(TenonMechanism *m, const char *part) {
    double p[3], q[4];
    if (ok(tenon_get_placement(m, part, p, q), part)) {
        printf("  %-8s at (%.3f, %.3f, %.3f), turned %.3f degrees about z\n", part, p[0], p[1],
               p[2], 2.0 * atan2(q[3], q[0]) * 180.0 / 3.14159265358979323846);
    }
}

int main(int argc, char **argv) {
    uint32_t major = 0, minor = 0;
    tenon_api_version(&major, &minor);
    if (major != TENON_API_MAJOR) {
        fprintf(stderr, "Tenon's C API %u.%u: this host needs %d.x\n", major, minor, TENON_API_MAJOR);
        return 1;
    }
    const char *path = argc > 1 ? argv[1] : "fixtures/slider-crank.json";
    TenonMechanism *m = NULL;
    if (!ok(tenon_mechanism_open(path, &m), "open")) return 1;

    if (ok(tenon_solve(m), "solve")) {
        printf("solved %s:\n", path);
        show(m, "crank");
        show(m, "piston");
    }
    /* A dimension changes in the CAD model: set it and solve again. */
    if (ok(tenon_set_parameter(m, "stroke", 80.0), "set stroke") && ok(tenon_solve(m), "re-solve")) {
        printf("with a stroke of 80 (the parts moved as little as possible):\n");
        show(m, "crank");
        show(m, "piston");
    }
    /* The user drags the crank by hand: a quarter turn in 5 degree steps. */
    const char *held[] = {"crank"};
    if (ok(tenon_drag_begin(m, held, 1), "drag begin")) {
        double p[3], q[4];
        tenon_get_placement(m, "crank", p, q);
        double start = 2.0 * atan2(q[3], q[0]);
        for (int k = 1; k <= 18; k++) {
            double a = start + k * 5.0 * 3.14159265358979323846 / 180.0;
            double turn[4] = {cos(a / 2.0), 0.0, 0.0, sin(a / 2.0)};
            if (!ok(tenon_drag_step(m, "crank", p, turn), "drag step")) break;
        }
        tenon_drag_end(m);
        printf("after dragging the crank:\n");
        show(m, "crank");
        show(m, "piston");
    }
    /* What is left free, and is anything redundant? */
    if (ok(tenon_diagnose(m), "diagnose")) {
        int64_t dof = -1;
        size_t redundant = 0;
        tenon_dof(m, &dof);
        tenon_joint_issue_count(m, false, &redundant);
        printf("%lld degree(s) of freedom left, %zu redundant joint(s)\n", (long long)dof, redundant);
    }
    /* A mistake is a status and a message, never a crash. */
    ok(tenon_set_parameter(m, "strok", 80.0), "set strok");
    tenon_mechanism_free(m);
    return 0;
}
