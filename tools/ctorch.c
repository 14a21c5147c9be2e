#include <stdio.h>
#include "ctorch.h"
int main(void) { printf("ctorch %s\n", CT_VERSION_STRING); return 0; }
