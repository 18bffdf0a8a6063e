// Tenon's C ABI from a C++ host (as FreeCAD's assembly module is): the handle in a
// unique_ptr, statuses turned into exceptions, messages as std::string. Opens a bundled
// fixture, solves, reads every placement, diagnoses, sets a parameter and re-solves.
//
// Usage: host_test_cpp FIXTURE_DIR. Exit 0 when every check holds.
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tenon.h"

namespace {

std::string last_error() {
    size_t needed = 0;
    tenon_last_error(nullptr, 0, &needed);
    std::vector<char> buffer(needed + 1);
    tenon_last_error(buffer.data(), buffer.size(), &needed);
    return std::string(buffer.data());
}

struct Error : std::runtime_error {
    TenonStatus status;
    Error(TenonStatus s, const std::string &m) : std::runtime_error(m), status(s) {}
};

void check(TenonStatus s) {
    if (s != TENON_STATUS_OK) throw Error(s, last_error());
}

struct Free {
    void operator()(TenonMechanism *m) const { tenon_mechanism_free(m); }
};
using Mechanism = std::unique_ptr<TenonMechanism, Free>;

Mechanism open(const std::string &path) {
    TenonMechanism *raw = nullptr;
    check(tenon_mechanism_open(path.c_str(), &raw));
    return Mechanism(raw);
}

int failures = 0;

void expect(bool ok, const char *what) {
    if (!ok) {
        std::fprintf(stderr, "failed: %s\n", what);
        failures++;
    }
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: host_test_cpp FIXTURE_DIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    try {
        Mechanism m = open(dir + "/slider-crank.json");
        check(tenon_solve(m.get()));
        double p[3], q[4];
        check(tenon_get_placement(m.get(), "piston", p, q));
        expect(std::isfinite(p[0]), "piston placement");
        double norm = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
        expect(std::fabs(norm - 1.0) < 1e-12, "unit quaternion");
        double stroke = 0.0;
        check(tenon_get_parameter(m.get(), "stroke", &stroke));
        check(tenon_set_parameter(m.get(), "stroke", stroke + 10.0));
        check(tenon_solve(m.get()));
        check(tenon_diagnose(m.get()));
        int64_t dof = -2;
        check(tenon_dof(m.get(), &dof));
        expect(dof >= 0, "dof counted");
        size_t needed = 0;
        tenon_report_json(m.get(), nullptr, 0, &needed);
        std::string report(needed + 1, '\0');
        check(tenon_report_json(m.get(), &report[0], report.size(), &needed));
        expect(report.find("\"clusters\"") != std::string::npos, "report has clusters");
        try {
            open(dir + "/no-such-file.json");
            expect(false, "a missing file throws");
        } catch (const Error &e) {
            expect(e.status == TENON_STATUS_BAD_INPUT, "missing file: bad input");
            expect(std::string(e.what()).find("no-such-file.json") != std::string::npos,
                   "missing file named");
        }
        try {
            check(tenon_set_parameter(m.get(), "nope", 1.0));
            expect(false, "an unknown parameter throws");
        } catch (const Error &e) {
            expect(e.status == TENON_STATUS_UNKNOWN_NAME, "unknown parameter");
        }
    } catch (const Error &e) {
        std::fprintf(stderr, "unexpected: status %d: %s\n", static_cast<int>(e.status), e.what());
        return 1;
    }
    if (failures) {
        std::fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    return 0;
}
