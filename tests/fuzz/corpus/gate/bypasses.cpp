#include /* <cmath> */ "/etc/passwd"
#pragma /*
*/ GCC optimize("O0")
int x = 1'0 /'/*';
#include "/proc/self/environ"
// */
auto s = u8R"( " /* )";
#define CAT(a,b) a##b
CAT(__attri,bute__)((constructor)) static void f() {}
__attribute__((used, constructor)) static void g() {}
[[gnu::used, gnu::constructor]] static void h() {}
#line 1 "/usr/include/c++/12/cmath"
extern "C" int kevin_forward(const void*) { return 0; }
