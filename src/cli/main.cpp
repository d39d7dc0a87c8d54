// main.cpp — entry point of the `kevin` binary.
#include <iostream>

#include "cli/app.h"

int main(int argc, char** argv) { return kevin::cli::run_cli(argc, argv, std::cout, std::cerr); }
