// backend_parity_tests' main: gtest's, plus one check. Its tests are listed per backend that can
// run on the machine that lists them (one placeholder test where one cannot, the cudnn backend
// without a GPU), so a list made on another machine can name tests that do not exist here: gtest
// would run none of them and pass. A run whose filter selects no test therefore fails, saying why.
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (rc == 0 && ::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::fprintf(stderr,
                 "backend_parity_tests: the filter '%s' selects no test on this machine: the test list was made where "
                 "other backends could (or could not) run.\nhint: run backend_parity_tests directly (e.g. "
                 "--gtest_filter='*cudnn*'), or relink it here (touch tests/backends/backend_parity_test.cpp, then "
                 "cmake --build) so that ctest lists this machine's tests\n",
                 ::testing::GTEST_FLAG(filter).c_str());
    return 1;
  }
  return rc;
}
