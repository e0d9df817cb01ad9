/*
Copyright The accel-dra Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

/*
 * DCMI v2 of the mock: the calls of the Ascend 950's library (the
 * DCMI_VERSION_2 build of libdcmi.so), which name a chip by its logic id
 * (dev_id) alone. mock_dcmi.c includes this file at its end, so it shares
 * that file's node, fixture and helpers. Behaviour follows the CANN driver
 * source (GitHub verylucky01/driver, commit e29d066; "dcmi/…" paths are
 * under src/custom/dev_prod/user/ there):
 *
 *   - dcmi_init answers -8255 on a 950 board (dcmi_init_basic.c:1446-1452)
 *     and dcmiv2_init answers -8255 on any other (1497-1502, through
 *     dcmi_check_is_init_in_950 and dcmi_init_board_type_in_950,
 *     1294-1331): a 950 is read through v2 only, every other chip through
 *     v1 only. mind-cluster tries dcmi_init, then dcmiv2_init
 *     (ascend-common/devmanager/devmanager_common.go DetectDcmiApiVersion).
 *   - every v2 call answers -8255 off a 950 board
 *     (dcmi_board_chip_type_is_ascend_950 checks: dcmiv2_basic_info_intf.c:
 *     52-55, 191-194, 240-243, 316-319; dcmiv2_running_info_intf.c:124-127
 *     in 114-152, and 414-443; dcmiv2_npu_link_intf.c:53-56) and an unknown logic
 *     id -8001 (dcmiv2_inner_get_card_id_device_id_from_logicid,
 *     dcmi_basic_info_intf.c:508).
 *   - dcmiv2_get_device_pcie_info answers -8255 on the unified-bus
 *     mainboards, super pod and A+K servers (dcmiv2_basic_info_intf.c:
 *     257-259; dcmi_product_judge.c:476-489: a 950 mainboard id's bits 5-7,
 *     0 pod, 1 A+K, 2 A+X, 3 card, dcmi_init_basic.c:500-523).
 *   - dcmiv2_get_topo_info_by_device_id answers SELF for one chip and the
 *     HAL's pair code otherwise (dcmi_inner_info_get_ext.c:1646-1678).
 */

/* The fixture's board and mainboard lines: what dcmiv2_get_device_board_info
 * and dcmiv2_get_mainboard_id report (Huawei's device plugin tells an
 * Atlas 350 card by them, mind-cluster ascend-device-plugin
 * pkg/server/manager_v2.go:53-74). */
static unsigned int board_id, mainboard_id;
static int initialized_v2;

#define A5_MAINBOARD_KIND(id) (((id) >> 5) & 0x7)
#define A5_MAINBOARD_POD 0
#define A5_MAINBOARD_A_K 1

/* load_v2_line reads a board or mainboard line; -1 for any other kind. */
static int load_v2_line(const char *kind, const char *line) {
    if (strcmp(kind, "board") == 0) {
        return sscanf(line, "board %x", &board_id) == 1;
    }
    if (strcmp(kind, "mainboard") == 0) {
        return sscanf(line, "mainboard %x", &mainboard_id) == 1;
    }
    return -1;
}

#define V2_FAIL_IF_ASKED()                      \
    do {                                        \
        hanging(__func__);                      \
        int rc_ = failing(__func__);            \
        if (rc_ != 0) {                         \
            return rc_;                         \
        }                                       \
        if (!initialized_v2) {                  \
            return DCMI_ERR_OPER_NOT_PERMITTED; \
        }                                       \
        if (chip_type() != CHIP_950) {          \
            return DCMI_ERR_NOT_SUPPORT;        \
        }                                       \
    } while (0)

/* V2_CHIP_OR_FAIL finds the chip of a logic id, as CHIP_OR_FAIL does by card. */
#define V2_CHIP_OR_FAIL(c, dev_id)                     \
    struct chip *c = by_logic(dev_id);                 \
    if (c == NULL) {                                   \
        return DCMI_ERR_INVALID_PARAMETER;             \
    }                                                  \
    do {                                               \
        int chip_rc_ = failing_on(__func__, c->logic); \
        if (chip_rc_ != 0) {                           \
            return chip_rc_;                           \
        }                                              \
    } while (0)

int dcmiv2_init(void) {
    initialized_v2 = 0;
    board_id = 0, mainboard_id = 0;
    if (load() != 0) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    in_docker = in_container();
    int rc = failing(__func__);
    if (rc != 0) {
        return rc;
    }
    if (chip_type() != CHIP_950) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    initialized_v2 = 1;
    return DCMI_OK;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* dcmiv2_get_device_list: the logic ids, sorted (dcmiv2_basic_info_intf.c:1037-1083). */
int dcmiv2_get_device_list(int *device_list, int *device_cnt, int list_len) {
    V2_FAIL_IF_ASKED();
    if (list_len <= 0 || nchips > list_len) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    for (int i = 0; i < nchips; i++) {
        device_list[i] = chips[i].logic;
    }
    qsort(device_list, (size_t)nchips, sizeof(int), cmp_int);
    int n = nchips;
    counted(__func__, &n);
    *device_cnt = n;
    return DCMI_OK;
}

int dcmiv2_get_chip_phy_id_by_dev_id(int dev_id, unsigned int *phyid) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    *phyid = (unsigned int)c->phy;
    return DCMI_OK;
}

/* The 950's chip name is split as the 910_93's: "950DT_9582" is chip_name
 * "Ascend950DT" and npu_name "9582" (dcmi_inner_info_get.c:1257-1302,
 * 1405-1415; the driver's names 950PR_95xx and 950DT_95xx,
 * dcmi_init_basic.c:568-569). */
int dcmiv2_get_device_chip_info(int dev_id, struct dcmi_chip_info_v2 *chip_info) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    int saved = initialized;
    initialized = 1; /* the v1 call does the same split; no v1 init needed here */
    int rc = dcmi_get_device_chip_info_v2(c->card, c->device, chip_info);
    initialized = saved;
    return rc;
}

int dcmiv2_get_device_hbm_info(int dev_id, struct dcmi_hbm_info *hbm_info) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    memset(hbm_info, 0, sizeof(*hbm_info));
    hbm_info->memory_size = c->hbm_mb;
    hbm_info->freq = 1600;
    hbm_info->memory_usage = c->hbm_mb / 20;
    hbm_info->temp = 40;
    return DCMI_OK;
}

int dcmiv2_get_device_pcie_info(int dev_id, struct dcmi_pcie_info_all *pcie_info) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    unsigned int kind = A5_MAINBOARD_KIND(mainboard_id);
    if (kind == A5_MAINBOARD_POD || kind == A5_MAINBOARD_A_K) {
        return DCMI_ERR_NOT_SUPPORT; /* unified-bus boards: no PCIe function */
    }
    memset(pcie_info, 0, sizeof(*pcie_info));
    pcie_info->venderid = 0x19e5;
    pcie_info->subvenderid = 0x0200;
    pcie_info->deviceid = c->pci_device_id;
    pcie_info->domain = c->domain;
    pcie_info->bdf_busid = c->bus;
    pcie_info->bdf_deviceid = c->dev;
    pcie_info->bdf_funcid = c->fn;
    return DCMI_OK;
}

/* dcmiv2_get_device_health: 0-3, or 0xFFFFFFFF for a device that does not
 * exist, with rc 0 (the 950 DCMI reference, dcmiv2_get_device_health). */
int dcmiv2_get_device_health(int dev_id, unsigned int *health) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    *health = c->health;
    return DCMI_OK;
}

/* dcmiv2_get_device_error_code_list (dcmiv2_fault_manage_intf.c:155-209):
 * a list too short for the codes is an invalid parameter. */
int dcmiv2_get_device_error_code_list(int dev_id, int *error_count, unsigned int *error_code_list,
                                      unsigned int list_len) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    if (list_len == 0 || (unsigned int)c->ncodes > list_len) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    for (int i = 0; i < c->ncodes; i++) {
        error_code_list[i] = c->codes[i];
    }
    *error_count = c->ncodes;
    return DCMI_OK;
}

int dcmiv2_get_topo_info_by_device_id(int dev_id1, int dev_id2, int *topo_type) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(a, dev_id1);
    V2_CHIP_OR_FAIL(b, dev_id2);
    if (a->phy == b->phy) {
        *topo_type = DCMI_TOPO_TYPE_SELF;
    } else if (topo[a->logic][b->logic] >= 0) {
        *topo_type = topo[a->logic][b->logic];
    } else {
        *topo_type = topo_default;
    }
    return DCMI_OK;
}

/* dcmiv2_get_device_info: the chip's super pod (SPOD_INFO, as the v1 call
 * answers it on 910_93: the HAL builds spod_info.c for the 950 products
 * too, src/ascend_hal/dms/chip/soc/CMakeLists.txt:13-16; mind-cluster's
 * DcV2Manager.DcGetSuperPodInfo asks it so, devmanager/dcmi/dcmi_v2.go).
 * Other commands are beyond the mock. */
int dcmiv2_get_device_info(int dev_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf,
                           unsigned int *size) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    if (main_cmd == DCMI_MAIN_CMD_CHIP_INF && sub_cmd == DCMI_CHIP_INF_SUB_CMD_SPOD_INFO) {
        return spod_info(c, buf, size);
    }
    return DCMI_ERR_NOT_SUPPORT;
}

int dcmiv2_get_driver_version(char *driver_ver, unsigned int len) {
    V2_FAIL_IF_ASKED();
    if (len < strlen(driver_version) + 1) {
        return DCMI_ERR_INVALID_PARAMETER;
    }
    snprintf(driver_ver, len, "%s", driver_version);
    return DCMI_OK;
}

int dcmiv2_get_device_board_info(int dev_id, struct dcmi_board_info *board_info) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    memset(board_info, 0, sizeof(*board_info));
    board_info->board_id = board_id;
    board_info->slot_id = (unsigned int)c->card;
    return DCMI_OK;
}

int dcmiv2_get_mainboard_id(int dev_id, unsigned int *id) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    (void)c;
    *id = mainboard_id;
    return DCMI_OK;
}

/* Telemetry through v2, from the telemetry fixture as the v1 calls read
 * it (mock_dcmi.c read_telemetry): the 950's calls take the logic id
 * (dcmiv2_running_info_intf.c: power, temperature, utilization). */
int dcmiv2_get_device_utilization_rate(int dev_id, int input_type, unsigned int *utilization_rate) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    TELEMETRY_OR_FAIL(t, c);
    if (input_type != DCMI_UTILIZATION_AICORE) {
        return DCMI_ERR_NOT_SUPPORT;
    }
    *utilization_rate = t.util;
    return DCMI_OK;
}

int dcmiv2_get_device_temperature(int dev_id, int *temperature) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    TELEMETRY_OR_FAIL(t, c);
    *temperature = t.temp;
    return DCMI_OK;
}

int dcmiv2_get_device_power_info(int dev_id, int *power) {
    V2_FAIL_IF_ASKED();
    V2_CHIP_OR_FAIL(c, dev_id);
    TELEMETRY_OR_FAIL(t, c);
    *power = t.power;
    return DCMI_OK;
}
