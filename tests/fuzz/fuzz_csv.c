/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness: the CSV reader of `kiln node import` (csv_parse). */
#include <stdint.h>
#include <stdlib.h>

#include "csv.h"
#include "kiln/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct csv_doc doc = { 0 };

	if (csv_parse(&doc, (const char *)data, size) == 0) {
		/* every record has its fields, each a string */
		for (size_t i = 0; i < doc.count; i++)
			for (size_t k = 0; k < doc.records[i].count; k++)
				if (!doc.records[i].fields[k])
					abort();
		csv_doc_free(&doc);
	}
	kiln_error_clear();
	return 0;
}
