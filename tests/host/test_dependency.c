/* A library the missing-dependency plugin links against, then kept where the loader won't look. */
int sy_test_dependency_value(void) {
    return 1;
}
