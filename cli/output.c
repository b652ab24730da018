/* Placeholder; replaced by the real module. */
extern int kiln_placeholder_output;
