/*
 * Tenon's C ABI from a C host: build a four-bar in code, solve and check placements
 * against the loop-closure formula, drag the crank a full turn in 1 degree steps with
 * no flip, diagnose a conflicting assembly and read its joints, run the kinematics, and
 * feed bad input getting the right status and message each time.
 *
 * Usage: host_test MALFORMED_FILE...  (each file is opened and its message printed as
 * "file<TAB>status<TAB>message" for the harness to compare with the facade's).
 * Exit 0 when every check holds; the first failure is printed with its line.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenon.h"

static int failures = 0;

#define EXPECT(cond)                                                        \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                     \
        }                                                                   \
    } while (0)

static const char *last_error(void) {
    static char buffer[4096];
    size_t needed = 0;
    if (tenon_last_error(buffer, sizeof buffer, &needed) != TENON_STATUS_OK) {
        return "(message too long)";
    }
    return buffer;
}

#define CALL(expr, status)                                                            \
    do {                                                                              \
        TenonStatus got_ = (expr);                                                    \
        if (got_ != (status)) {                                                       \
            fprintf(stderr, "%s:%d: %s gave %d, expected %d: %s\n", __FILE__, __LINE__, \
                    #expr, (int)got_, (int)(status), last_error());                   \
            failures++;                                                               \
        }                                                                             \
    } while (0)

static const double PI = 3.14159265358979323846;

/* Ground pivots 100 mm apart, crank 30, coupler 90, rocker 80: a crank-rocker. */
static const double D = 100.0, A = 30.0, B = 90.0, C = 80.0;

/* The rocker's angle for a crank angle (radians), on the branch with the coupler
 * above the ground line (loop closure, written here independently of Tenon). */
static double rocker_angle(double crank) {
    double px = A * cos(crank), py = A * sin(crank);
    double dx = D - px, dy = -py;
    double e = sqrt(dx * dx + dy * dy);
    double base = atan2(-dy, -dx); /* direction from the rocker pivot to the crank tip */
    double cos_gamma = (C * C + e * e - B * B) / (2.0 * C * e);
    return base - acos(cos_gamma);
}

static void quaternion_z(double angle, double q[4]) {
    q[0] = cos(angle / 2.0);
    q[1] = 0.0;
    q[2] = 0.0;
    q[3] = sin(angle / 2.0);
}

static double z_angle(const double q[4]) { return 2.0 * atan2(q[3], q[0]); }

static double wrap(double a) {
    while (a > PI) a -= 2.0 * PI;
    while (a <= -PI) a += 2.0 * PI;
    return a;
}

/* Builds the four-bar in code; `drive` (degrees, or NAN) locks the crank's angle. */
static TenonMechanism *four_bar(double drive) {
    TenonMechanism *m = NULL;
    CALL(tenon_mechanism_new("{\"length\": \"mm\", \"angle\": \"deg\"}", &m), TENON_STATUS_OK);
    if (!m) return NULL;
    CALL(tenon_add_part(m, "{\"id\": \"ground\", \"grounded\": true, \"markers\": {"
                           "\"o\": {}, \"d\": {\"position\": [100, 0, 0]}}}"),
         TENON_STATUS_OK);
    /* Started near the solution, with the crank at 0 degrees. */
    double r0 = rocker_angle(0.0);
    char part[512];
    CALL(tenon_add_part(m, "{\"id\": \"crank\", \"markers\": {\"o\": {}, \"t\": {\"position\": [30, 0, 0]}}}"),
         TENON_STATUS_OK);
    snprintf(part, sizeof part,
             "{\"id\": \"rocker\", \"placement\": {\"position\": [100, 0, 0], "
             "\"rotation\": {\"axis\": [0, 0, 1], \"angle\": %.6f}}, "
             "\"markers\": {\"o\": {}, \"t\": {\"position\": [80, 0, 0]}}}",
             r0 * 180.0 / PI);
    CALL(tenon_add_part(m, part), TENON_STATUS_OK);
    double tip_x = D + C * cos(r0) + 1.0, tip_y = C * sin(r0) - 1.0;
    snprintf(part, sizeof part,
             "{\"id\": \"coupler\", \"placement\": {\"position\": [30, 0, 0], "
             "\"rotation\": {\"axis\": [0, 0, 1], \"angle\": %.6f}}, "
             "\"markers\": {\"o\": {}}}",
             atan2(tip_y, tip_x - A) * 180.0 / PI);
    CALL(tenon_add_part(m, part), TENON_STATUS_OK);
    double at[3] = {90.0, 0.0, 0.0};
    CALL(tenon_add_marker(m, "coupler", "t", at, NULL), TENON_STATUS_OK);
    char joint[256];
    if (isnan(drive)) {
        CALL(tenon_add_joint(m, "{\"id\": \"pivot\", \"type\": \"revolute\", "
                                "\"i\": {\"part\": \"crank\", \"marker\": \"o\"}, "
                                "\"j\": {\"part\": \"ground\", \"marker\": \"o\"}}"),
             TENON_STATUS_OK);
    } else {
        snprintf(joint, sizeof joint,
                 "{\"id\": \"pivot\", \"type\": \"revolute\", \"angle\": %.9f, "
                 "\"i\": {\"part\": \"crank\", \"marker\": \"o\"}, "
                 "\"j\": {\"part\": \"ground\", \"marker\": \"o\"}}",
                 drive);
        CALL(tenon_add_joint(m, joint), TENON_STATUS_OK);
    }
    CALL(tenon_add_joint(m, "{\"id\": \"elbow\", \"type\": \"revolute\", "
                            "\"i\": {\"part\": \"coupler\", \"marker\": \"o\"}, "
                            "\"j\": {\"part\": \"crank\", \"marker\": \"t\"}}"),
         TENON_STATUS_OK);
    CALL(tenon_add_joint(m, "{\"id\": \"wrist\", \"type\": \"revolute\", "
                            "\"i\": {\"part\": \"coupler\", \"marker\": \"t\"}, "
                            "\"j\": {\"part\": \"rocker\", \"marker\": \"t\"}}"),
         TENON_STATUS_OK);
    CALL(tenon_add_joint(m, "{\"id\": \"rocker-pivot\", \"type\": \"revolute\", "
                            "\"i\": {\"part\": \"rocker\", \"marker\": \"o\"}, "
                            "\"j\": {\"part\": \"ground\", \"marker\": \"d\"}}"),
         TENON_STATUS_OK);
    return m;
}

static void solves_a_driven_four_bar(void) {
    TenonMechanism *m = four_bar(30.0);
    if (!m) return;
    CALL(tenon_solve(m), TENON_STATUS_OK);
    double p[3], q[4];
    CALL(tenon_get_placement(m, "crank", p, q), TENON_STATUS_OK);
    EXPECT(fabs(z_angle(q) - PI / 6.0) < 1e-9);
    CALL(tenon_get_placement(m, "rocker", p, q), TENON_STATUS_OK);
    EXPECT(fabs(p[0] - 100.0) < 1e-9 && fabs(p[1]) < 1e-9);
    EXPECT(fabs(wrap(z_angle(q) - rocker_angle(PI / 6.0))) < 1e-9);
    int64_t dof = -2;
    CALL(tenon_dof(m, &dof), TENON_STATUS_OK);
    EXPECT(dof == 0);
    double residual = 1.0;
    CALL(tenon_max_residual(m, &residual), TENON_STATUS_OK);
    EXPECT(residual < 1e-9);
    /* A parameter-free change: the drive in degrees through set_placement of the crank
     * does not move a driven crank. Unknown names are named. */
    CALL(tenon_get_placement(m, "nope", p, q), TENON_STATUS_UNKNOWN_NAME);
    EXPECT(strstr(last_error(), "nope") != NULL);
    CALL(tenon_set_parameter(m, "nope", 1.0), TENON_STATUS_UNKNOWN_NAME);
    /* The report as JSON, asked for its length first. */
    size_t needed = 0;
    CALL(tenon_report_json(m, NULL, 0, &needed), TENON_STATUS_WRONG_LENGTH);
    EXPECT(needed > 10);
    char *report = malloc(needed + 1);
    CALL(tenon_report_json(m, report, needed + 1, &needed), TENON_STATUS_OK);
    EXPECT(strstr(report, "\"status\": \"solved\"") != NULL);
    free(report);
    tenon_mechanism_free(m);
}

static void drags_the_crank_a_full_turn(void) {
    TenonMechanism *m = four_bar(NAN);
    if (!m) return;
    CALL(tenon_solve(m), TENON_STATUS_OK);
    const char *parts[] = {"crank"};
    CALL(tenon_drag_begin(m, parts, 1), TENON_STATUS_OK);
    double origin[3] = {0.0, 0.0, 0.0}, q[4], p[3];
    double previous = 0.0;
    int steps_ok = 0;
    for (int k = 1; k <= 360; k++) {
        double angle = k * PI / 180.0;
        quaternion_z(angle, q);
        if (tenon_drag_step(m, "crank", origin, q) != TENON_STATUS_OK) {
            fprintf(stderr, "drag step %d: %s\n", k, last_error());
            failures++;
            break;
        }
        steps_ok++;
        CALL(tenon_get_placement(m, "crank", p, q), TENON_STATUS_OK);
        EXPECT(fabs(wrap(z_angle(q) - angle)) < 1e-6);
        CALL(tenon_get_placement(m, "rocker", p, q), TENON_STATUS_OK);
        double rocker = z_angle(q);
        /* On the same branch as at the start, every step: no flip. */
        EXPECT(fabs(wrap(rocker - rocker_angle(angle))) < 1e-6);
        if (k > 1) EXPECT(fabs(wrap(rocker - previous)) < 0.05);
        previous = rocker;
    }
    EXPECT(steps_ok == 360);
    /* A grounded part cannot be dragged; nothing begins. */
    const char *ground[] = {"ground"};
    CALL(tenon_drag_begin(m, ground, 1), TENON_STATUS_BAD_INPUT);
    CALL(tenon_drag_end(m), TENON_STATUS_OK);
    CALL(tenon_drag_end(m), TENON_STATUS_BAD_INPUT);
    tenon_mechanism_free(m);
}

static void names_conflicting_joints(void) {
    /* A bar pinned at the origin cannot reach a point 300 mm away with a 100 mm arm. */
    const char *text =
        "{\"format\": \"tenon-assembly\", \"version\": 1,"
        " \"parts\": ["
        "  {\"id\": \"ground\", \"grounded\": true, \"markers\": {\"o\": {}, \"far\": {\"position\": [300, 0, 0]}}},"
        "  {\"id\": \"bar\", \"markers\": {\"o\": {}, \"tip\": {\"position\": [100, 0, 0]}}}],"
        " \"joints\": ["
        "  {\"id\": \"pin\", \"type\": \"revolute\", \"i\": {\"part\": \"bar\", \"marker\": \"o\"},"
        "   \"j\": {\"part\": \"ground\", \"marker\": \"o\"}},"
        "  {\"id\": \"reach\", \"type\": \"distance\", \"distance\": 50,"
        "   \"i\": {\"part\": \"bar\", \"marker\": \"tip\"}, \"j\": {\"part\": \"ground\", \"marker\": \"far\"}}]}";
    TenonMechanism *m = NULL;
    CALL(tenon_mechanism_from_json(text, "conflict.json", &m), TENON_STATUS_OK);
    if (!m) return;
    CALL(tenon_solve(m), TENON_STATUS_NOT_SOLVED);
    EXPECT(strstr(last_error(), "not solved") != NULL);
    CALL(tenon_diagnose(m), TENON_STATUS_OK);
    size_t count = 0;
    CALL(tenon_joint_issue_count(m, true, &count), TENON_STATUS_OK);
    EXPECT(count == 2);
    int pin = 0, reach = 0;
    for (size_t k = 0; k < count; k++) {
        char name[64];
        size_t needed = 0;
        CALL(tenon_joint_issue(m, true, k, name, sizeof name, &needed), TENON_STATUS_OK);
        pin += strcmp(name, "pin") == 0;
        reach += strcmp(name, "reach") == 0;
    }
    EXPECT(pin == 1 && reach == 1);
    TenonClusterStatus status = TENON_CLUSTER_STATUS_WELL_CONSTRAINED;
    int64_t dof = 0;
    CALL(tenon_cluster_status(m, 0, &status, &dof), TENON_STATUS_OK);
    EXPECT(status == TENON_CLUSTER_STATUS_CONFLICTING);
    CALL(tenon_cluster_status(m, 5, &status, &dof), TENON_STATUS_WRONG_LENGTH);
    tenon_mechanism_free(m);
}

static void estimates_the_condition(void) {
    /* The seeds' near-duplicate couplings: (1, 0) and (1 + 1e-8, 1e-6). */
    const char *text =
        "{\"format\": \"tenon-assembly\", \"version\": 1,"
        " \"units\": {\"length\": \"m\", \"angle\": \"rad\"},"
        " \"parts\": ["
        "  {\"id\": \"ground\", \"grounded\": true,"
        "   \"markers\": {\"anchor\": {\"position\": [-0.2, 0.1, 0]}}},"
        "  {\"id\": \"body\", \"placement\": {\"position\": [0.45, 0.35, 0],"
        "   \"rotation\": {\"axis\": [0, 0, 1], \"angle\": 0.4}}, \"markers\": {\"c\": {}}}],"
        " \"joints\": ["
        "  {\"id\": \"plane\", \"type\": \"planar\", \"i\": {\"part\": \"body\", \"marker\": \"c\"},"
        "   \"j\": {\"part\": \"ground\", \"marker\": \"anchor\"}},"
        "  {\"id\": \"c1\", \"type\": \"expression\", \"i\": {\"part\": \"body\", \"marker\": \"c\"},"
        "   \"j\": {\"part\": \"ground\", \"marker\": \"anchor\"},"
        "   \"residuals\": [\"distance - sqrt(0.65^2 + 0.25^2)\"]},"
        "  {\"id\": \"c2\", \"type\": \"expression\", \"i\": {\"part\": \"body\", \"marker\": \"c\"},"
        "   \"j\": {\"part\": \"ground\", \"marker\": \"anchor\"},"
        "   \"residuals\": [\"(1 + 1e-8) * (distance - sqrt(0.65^2 + 0.25^2)) + 1e-6 * (angle - 0.4)\"]}]}";
    TenonMechanism *m = NULL;
    CALL(tenon_mechanism_from_json(text, "near.json", &m), TENON_STATUS_OK);
    double estimate = 0.0;
    CALL(tenon_cluster_condition(m, 0, &estimate), TENON_STATUS_BAD_INPUT);
    CALL(tenon_diagnose(m), TENON_STATUS_OK);
    CALL(tenon_cluster_condition(m, 0, &estimate), TENON_STATUS_OK);
    EXPECT(estimate > 1e5);
    CALL(tenon_cluster_condition(m, 3, &estimate), TENON_STATUS_WRONG_LENGTH);
    tenon_mechanism_free(m);
}

static void runs_the_kinematics(void) {
    const char *text =
        "{\"format\": \"tenon-assembly\", \"version\": 1,"
        " \"parts\": ["
        "  {\"id\": \"ground\", \"grounded\": true, \"markers\": {\"o\": {}}},"
        "  {\"id\": \"wheel\", \"markers\": {\"o\": {}}}],"
        " \"joints\": [{\"id\": \"axle\", \"type\": \"revolute\", \"i\": {\"part\": \"wheel\", \"marker\": \"o\"},"
        "   \"j\": {\"part\": \"ground\", \"marker\": \"o\"}}],"
        " \"motions\": [{\"joint\": \"axle\", \"angle\": \"90 * t\"}]}";
    TenonMechanism *m = NULL;
    CALL(tenon_mechanism_from_json(text, NULL, &m), TENON_STATUS_OK);
    if (!m) return;
    TenonRun *run = NULL;
    CALL(tenon_kinematics(m, 1.0, 0.1, &run), TENON_STATUS_OK);
    size_t frames = 0;
    bool completed = false;
    CALL(tenon_run_frame_count(run, &frames, &completed), TENON_STATUS_OK);
    EXPECT(frames == 11 && completed);
    double t = 0, value = 0, rate = 0, p[3], q[4];
    CALL(tenon_run_time(run, 10, &t), TENON_STATUS_OK);
    EXPECT(fabs(t - 1.0) < 1e-12);
    CALL(tenon_run_joint(run, 10, "axle", 0, &value, &rate), TENON_STATUS_OK);
    EXPECT(fabs(value - 90.0) < 1e-9 && fabs(rate - 90.0) < 1e-9);
    CALL(tenon_run_placement(run, 5, "wheel", p, q), TENON_STATUS_OK);
    EXPECT(fabs(z_angle(q) - PI / 4.0) < 1e-9);
    CALL(tenon_run_placement(run, 5, "ground", p, q), TENON_STATUS_UNKNOWN_NAME);
    CALL(tenon_run_time(run, 11, &t), TENON_STATUS_WRONG_LENGTH);
    tenon_run_free(run);
    tenon_mechanism_free(m);
}

static void refuses_bad_input(void) {
    TenonMechanism *m = NULL;
    CALL(tenon_mechanism_from_json(NULL, NULL, &m), TENON_STATUS_BAD_INPUT);
    EXPECT(m == NULL && strstr(last_error(), "null") != NULL);
    CALL(tenon_mechanism_from_json("{\"format\": \"tenon-assembly\", \"vers", "cut.json", &m),
         TENON_STATUS_BAD_INPUT);
    EXPECT(m == NULL && strstr(last_error(), "cut.json") != NULL && strstr(last_error(), "line 1") != NULL);
    CALL(tenon_mechanism_from_json("{\"format\": \"tenon-assembly\", \"version\": 1}", NULL, NULL),
         TENON_STATUS_BAD_INPUT);
    const char bad_utf8[] = {'{', (char)0xff, '}', 0};
    CALL(tenon_mechanism_from_json(bad_utf8, NULL, &m), TENON_STATUS_BAD_INPUT);
    EXPECT(strstr(last_error(), "UTF-8") != NULL);
    CALL(tenon_solve(NULL), TENON_STATUS_BAD_INPUT);
    CALL(tenon_mechanism_new("{\"length\": \"furlong\"}", &m), TENON_STATUS_BAD_INPUT);
    EXPECT(strstr(last_error(), "units.length") != NULL);

    CALL(tenon_mechanism_new(NULL, &m), TENON_STATUS_OK);
    CALL(tenon_add_part(m, "{\"id\": \"ground\", \"grounded\": true, \"markers\": {\"o\": {}}}"),
         TENON_STATUS_OK);
    CALL(tenon_add_part(m, "{\"id\": \"bar\", \"markers\": {\"o\": {}}}"), TENON_STATUS_OK);
    CALL(tenon_add_joint(m, "{\"id\": \"j\", \"type\": \"rivet\", \"i\": {\"part\": \"bar\", \"marker\": \"o\"},"
                            " \"j\": {\"part\": \"ground\", \"marker\": \"o\"}}"),
         TENON_STATUS_BAD_INPUT);
    EXPECT(strstr(last_error(), "unknown joint type 'rivet'") != NULL);
    CALL(tenon_add_joint(m, "{\"id\": \"j\", \"type\": \"revolute\", \"i\": {\"part\": \"bar\", \"marker\": \"zz\"},"
                            " \"j\": {\"part\": \"ground\", \"marker\": \"o\"}}"),
         TENON_STATUS_BAD_INPUT);
    EXPECT(strstr(last_error(), "joint 'j'") != NULL && strstr(last_error(), "no marker 'zz'") != NULL);
    CALL(tenon_add_part(m, "{\"id\": \"bar\"}"), TENON_STATUS_BAD_INPUT);
    double zero[4] = {0, 0, 0, 0}, origin[3] = {0, 0, 0};
    CALL(tenon_set_placement(m, "bar", origin, zero), TENON_STATUS_BAD_INPUT);
    CALL(tenon_set_placement(m, "bar", origin, NULL), TENON_STATUS_BAD_INPUT);
    /* A message longer than the buffer: WRONG_LENGTH with the length needed. */
    CALL(tenon_solve(NULL), TENON_STATUS_BAD_INPUT);
    char tiny[4];
    size_t needed = 0;
    CALL(tenon_last_error(tiny, sizeof tiny, &needed), TENON_STATUS_WRONG_LENGTH);
    EXPECT(needed == strlen("mechanism: a null pointer"));
    /* A panic inside never reaches the host. */
    CALL(tenon_selftest_panic(), TENON_STATUS_INTERNAL_ERROR);
    EXPECT(strstr(last_error(), "internal error") != NULL);
    /* The handle still works after all that. */
    CALL(tenon_solve(m), TENON_STATUS_OK);
    tenon_mechanism_free(m);
    tenon_mechanism_free(NULL);
}

static void places_joints_within_a_tolerance(void) {
    /* The bar's tip is 0.01 mm short of the distance asked: a conflict, unless the host
       accepts disagreements of 0.05 mm. */
    const char *text =
        "{\"format\": \"tenon-assembly\", \"version\": 1,"
        " \"parts\": ["
        "  {\"id\": \"ground\", \"grounded\": true, \"markers\": {\"o\": {}, \"far\": {\"position\": [0, 100, 0]}}},"
        "  {\"id\": \"bar\", \"markers\": {\"o\": {}, \"tip\": {\"position\": [100, 0, 0]}}}],"
        " \"joints\": ["
        "  {\"id\": \"fix\", \"type\": \"fixed\", \"i\": {\"part\": \"bar\", \"marker\": \"o\"},"
        "   \"j\": {\"part\": \"ground\", \"marker\": \"o\"}},"
        "  {\"id\": \"reach\", \"type\": \"distance\", \"distance\": 141.43,"
        "   \"i\": {\"part\": \"bar\", \"marker\": \"tip\"}, \"j\": {\"part\": \"ground\", \"marker\": \"far\"}}]}";
    TenonMechanism *m = NULL;
    CALL(tenon_mechanism_from_json(text, "almost.json", &m), TENON_STATUS_OK);
    if (!m) return;
    CALL(tenon_solve(m), TENON_STATUS_NOT_SOLVED);
    /* The page needs a diagnosis; after one, it carries the joints' statuses. */
    size_t needed = 0;
    CALL(tenon_report_html(m, "almost", NULL, 0, &needed), TENON_STATUS_BAD_INPUT);
    CALL(tenon_diagnose(m), TENON_STATUS_OK);
    CALL(tenon_report_html(m, "almost", NULL, 0, &needed), TENON_STATUS_WRONG_LENGTH);
    char *page = malloc(needed + 1);
    CALL(tenon_report_html(m, "almost", page, needed + 1, &needed), TENON_STATUS_OK);
    EXPECT(strstr(page, "<title>almost - Tenon</title>") != NULL);
    EXPECT(strstr(page, "\"status\":\"conflicting\"") != NULL);
    free(page);
    CALL(tenon_set_tolerance(m, -1.0), TENON_STATUS_BAD_INPUT);
    CALL(tenon_set_tolerance(m, 0.05), TENON_STATUS_OK);
    CALL(tenon_solve(m), TENON_STATUS_OK);
    double length = 0, angle = 0, geometric = 0;
    CALL(tenon_tolerances(m, &length, &angle, &geometric), TENON_STATUS_OK);
    EXPECT(length == 1e-10 && angle == 1e-10 && geometric == 0.05);
    TenonClusterStatus status = TENON_CLUSTER_STATUS_WELL_CONSTRAINED;
    int64_t dof = -1;
    CALL(tenon_cluster_status(m, 0, &status, &dof), TENON_STATUS_OK);
    EXPECT(status == TENON_CLUSTER_STATUS_OVER_CONSTRAINED && dof == 0);
    tenon_mechanism_free(m);
}

int main(int argc, char **argv) {
    uint32_t major = 0, minor = 0;
    CALL(tenon_api_version(&major, &minor), TENON_STATUS_OK);
    EXPECT(major == TENON_API_MAJOR && (int64_t)minor - TENON_API_MINOR >= 0);
    solves_a_driven_four_bar();
    drags_the_crank_a_full_turn();
    names_conflicting_joints();
    places_joints_within_a_tolerance();
    estimates_the_condition();
    runs_the_kinematics();
    refuses_bad_input();
    for (int k = 1; k < argc; k++) {
        TenonMechanism *m = NULL;
        TenonStatus s = tenon_mechanism_open(argv[k], &m);
        printf("%s\t%d\t%s\n", argv[k], (int)s, last_error());
        tenon_mechanism_free(m);
    }
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    return 0;
}
