#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
static void t0(void **s){(void)s;}
int main(void){const struct CMUnitTest t[]={cmocka_unit_test(t0)};return cmocka_run_group_tests(t,NULL,NULL);}
