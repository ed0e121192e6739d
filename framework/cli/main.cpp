// Entry point of the `ablate` executable; all behaviour lives in ablate::cli::run (cli.cpp).
#include <iostream>

#include "cli/cli.hpp"

int main(int argc, char** argv) {
  return ablate::cli::run(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
