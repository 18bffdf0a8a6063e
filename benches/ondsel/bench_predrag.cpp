// Times OndselSolver from an .asmt file to runPreDrag (its static solve), in-process,
// as Tenon's corpus_loop times read + build + solve. Usage: bench_predrag N FILE...
// Written for benches/ondsel/run.sh, which builds it against OndselSolver's sources.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <algorithm>
#include "OndselSolver/ASMTAssembly.h"  // from ONDSEL_SOURCE_DIR (-I)

int main(int argc, char** argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 20;
    for (int k = 2; k < argc; k++) {
        std::vector<double> times;
        bool ok = true;
        for (int r = 0; r < n && ok; r++) {
            auto t0 = std::chrono::steady_clock::now();
            try {
                auto assembly = MbD::ASMTAssembly::assemblyFromFile(argv[k]);
                assembly->runPreDrag();
            } catch (...) {
                ok = false;
            }
            auto t1 = std::chrono::steady_clock::now();
            times.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        std::sort(times.begin(), times.end());
        std::fprintf(stderr, "%s\t%s\t%.1f\t%.1f\n", argv[k], ok ? "ok" : "threw", times.front(),
                    times[times.size() / 2]);
        std::fflush(stderr);
    }
    return 0;
}
