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
 * accel-dra's own declarations of the part of Huawei's DCMI (libdcmi.so)
 * the Ascend backend calls: the mock library (mock_dcmi.c) is built
 * against them, and layout_test compares every struct's size and field
 * offsets with the Go mirrors in dcmi.go.
 *
 * Each struct, constant and prototype below is field for field the one of
 * the public header dcmi_interface_api.h published in Ascend/mind-cluster,
 * component/ascend-common/devmanager/dcmi/dcmi_interface_api.h (commit
 * 2c141d42ca7b6b89334dc8ab1876a06df3e849d6), written out here by hand and
 * cut to what we use. dcmi_get_topo_info_by_device_id and its
 * DCMI_TOPO_TYPE_* values are the DCMI API reference's (hiascend.com,
 * "dcmi_get_topo_info_by_device_id"), which that header lacks; the
 * VDEV_MNG main command (52) and its sub commands are mind-cluster's
 * dcmi/constants.go (MainCmdVDevMng, VmngSubCmdGetVDevResource,
 * VmngSubCmdGetTotalResource).
 */
#ifndef ACCEL_DRA_DCMI_H
#define ACCEL_DRA_DCMI_H

#define MAX_CHIP_NAME_LEN 32
#define TEMPLATE_NAME_LEN 32
#define DCMI_VDEV_RES_NAME_LEN 16
#define DCMI_VDEV_SIZE 20
#define DCMI_VDEV_FOR_RESERVE 32
#define DCMI_SOC_SPLIT_MAX 32

struct dcmi_chip_info {
    unsigned char chip_type[MAX_CHIP_NAME_LEN];
    unsigned char chip_name[MAX_CHIP_NAME_LEN];
    unsigned char chip_ver[MAX_CHIP_NAME_LEN];
    unsigned int aicore_cnt;
};

/* dcmi_interface_api.h:81-87 of the driver source (verylucky01/driver
 * e29d066, src/custom/include), dcmi_get_device_chip_info_v2 line 2017:
 * dcmi_chip_info and npu_name. */
struct dcmi_chip_info_v2 {
    unsigned char chip_type[MAX_CHIP_NAME_LEN];
    unsigned char chip_name[MAX_CHIP_NAME_LEN];
    unsigned char chip_ver[MAX_CHIP_NAME_LEN];
    unsigned int aicore_cnt;
    unsigned char npu_name[MAX_CHIP_NAME_LEN];
};

struct dcmi_pcie_info_all {
    unsigned int venderid;
    unsigned int subvenderid;
    unsigned int deviceid;
    unsigned int subdeviceid;
    int domain;
    unsigned int bdf_busid;
    unsigned int bdf_deviceid;
    unsigned int bdf_funcid;
    unsigned char reserve[32];
};

struct dcmi_hbm_info {
    unsigned long long memory_size;
    unsigned int freq;
    unsigned long long memory_usage;
    int temp;
    unsigned int bandwith_util_rate;
};

struct dcmi_get_memory_info_stru {
    unsigned long long memory_size;      /* MB */
    unsigned long long memory_available;
    unsigned int freq;
    unsigned long hugepagesize;
    unsigned long hugepages_total;
    unsigned long hugepages_free;
    unsigned int utiliza;
    unsigned char reserve[60];
};

enum dcmi_ip_addr_type { DCMI_IPADDR_TYPE_V4 = 0, DCMI_IPADDR_TYPE_V6 = 1, DCMI_IPADDR_TYPE_ANY = 2 };

struct dcmi_ip_addr {
    union {
        unsigned char ip6[16];
        unsigned char ip4[4];
    } u_addr;
    enum dcmi_ip_addr_type ip_type;
};

enum dcmi_port_type { DCMI_VNIC_PORT = 0, DCMI_ROCE_PORT = 1, DCMI_INVALID_PORT };

/* dcmi_interface_api.h:364-377 (CHIP_INF is the 13th) and the VDEV_MNG
 * the vNPU calls use. */
enum dcmi_main_cmd { DCMI_MAIN_CMD_CHIP_INF = 12, DCMI_MAIN_CMD_VDEV_MNG = 52 };

/* sub commands of DCMI_MAIN_CMD_CHIP_INF, dcmi_interface_api.h:599-605 */
#define DCMI_CHIP_INF_SUB_CMD_SPOD_INFO 1
#define DCMI_CHIP_INF_SUB_CMD_SPOD_NODE_STATUS 2

/* dcmi_interface_api.h:607-615: a chip's super-pod identity. */
struct dcmi_spod_info {
    unsigned int sdid;
    unsigned int super_pod_size;
    unsigned int super_pod_id;
    unsigned int server_index;
    unsigned int chassis_id;
    unsigned int super_pod_type;
    unsigned int reserve[6]; /* the size of dcmi_spod_info is 48 */
};

enum {
    DCMI_TOPO_TYPE_SELF = 0,
    DCMI_TOPO_TYPE_SYS,
    DCMI_TOPO_TYPE_PHB,
    DCMI_TOPO_TYPE_HCCS,
    DCMI_TOPO_TYPE_PXB,
    DCMI_TOPO_TYPE_PIX,
    DCMI_TOPO_TYPE_SIO,
    DCMI_TOPO_TYPE_HCCS_SW,
    DCMI_TOPO_TYPE_UB,
    DCMI_TOPO_TYPE_BUTT,
};

struct dcmi_base_resource {
    unsigned long long token;
    unsigned long long token_max;
    unsigned long long task_timeout;
    unsigned int vfg_id;
    unsigned char vip_mode;
    unsigned char reserved[DCMI_VDEV_FOR_RESERVE - 1];
};

struct dcmi_computing_resource {
    float aic;
    float aiv;
    unsigned short dsa;
    unsigned short rtsq;
    unsigned short acsq;
    unsigned short cdqm;
    unsigned short c_core;
    unsigned short ffts;
    unsigned short sdma;
    unsigned short pcie_dma;
    unsigned long long memory_size;
    unsigned int event_id;
    unsigned int notify_id;
    unsigned int stream_id;
    unsigned int model_id;
    unsigned short topic_schedule_aicpu;
    unsigned short host_ctrl_cpu;
    unsigned short host_aicpu;
    unsigned short device_aicpu;
    unsigned short topic_ctrl_cpu_slot;
    unsigned int vdev_aicore_utilization;
    unsigned long long vdev_memory_total;
    unsigned long long vdev_memory_free;
    unsigned char reserved[DCMI_VDEV_FOR_RESERVE - DCMI_VDEV_SIZE];
};

struct dcmi_media_resource {
    float jpegd;
    float jpege;
    float vpc;
    float vdec;
    float pngd;
    float venc;
    unsigned char reserved[DCMI_VDEV_FOR_RESERVE];
};

struct dcmi_create_vdev_out {
    unsigned int vdev_id;
    unsigned int pcie_bus;
    unsigned int pcie_device;
    unsigned int pcie_func;
    unsigned int vfg_id;
    unsigned char reserved[DCMI_VDEV_FOR_RESERVE];
};

struct dcmi_create_vdev_res_stru {
    unsigned int vdev_id;
    unsigned int vfg_id;
    char template_name[TEMPLATE_NAME_LEN];
    unsigned char reserved[64];
};

struct dcmi_vdev_query_info {
    char name[DCMI_VDEV_RES_NAME_LEN];
    unsigned int status;
    unsigned int is_container_used;
    unsigned int vfid;
    unsigned int vfg_id;
    unsigned long long container_id;
    struct dcmi_base_resource base;
    struct dcmi_computing_resource computing;
    struct dcmi_media_resource media;
};

struct dcmi_vdev_query_stru {
    unsigned int vdev_id;
    struct dcmi_vdev_query_info query_info;
};

struct dcmi_soc_total_resource {
    unsigned int vdev_num;
    unsigned int vdev_id[DCMI_SOC_SPLIT_MAX];
    unsigned int vfg_num;
    unsigned int vfg_bitmap;
    struct dcmi_base_resource base;
    struct dcmi_computing_resource computing;
    struct dcmi_media_resource media;
};

/* sub commands of DCMI_MAIN_CMD_VDEV_MNG */
#define VMNG_SUB_CMD_GET_VDEV_RESOURCE 0
#define VMNG_SUB_CMD_GET_TOTAL_RESOURCE 1
#define VMNG_SUB_CMD_GET_VDEV_ACTIVITY 5 /* DCMI_VMNG_SUB_CMD_GET_VDEV_ACTIVITY, dcmi_interface_api.h:824 */

int dcmi_init(void);
int dcmi_get_card_list(int *card_num, int *card_list, int list_len);
int dcmi_get_device_num_in_card(int card_id, int *device_num);
int dcmi_get_device_logic_id(int *device_logic_id, int card_id, int device_id);
int dcmi_get_device_phyid_from_logicid(unsigned int logicid, unsigned int *phyid);
int dcmi_get_device_chip_info(int card_id, int device_id, struct dcmi_chip_info *chip_info);
int dcmi_get_device_chip_info_v2(int card_id, int device_id, struct dcmi_chip_info_v2 *chip_info);
int dcmi_get_device_hbm_info(int card_id, int device_id, struct dcmi_hbm_info *hbm_info);
int dcmi_get_device_memory_info_v3(int card_id, int device_id, struct dcmi_get_memory_info_stru *memory_info);
int dcmi_get_device_pcie_info_v2(int card_id, int device_id, struct dcmi_pcie_info_all *pcie_info);
int dcmi_get_device_health(int card_id, int device_id, unsigned int *health);
int dcmi_get_device_errorcode_v2(int card_id, int device_id, int *error_count, unsigned int *error_code_list,
                                 unsigned int list_len);
int dcmi_get_topo_info_by_device_id(int card_id1, int device_id1, int card_id2, int device_id2, int *topo_type);
int dcmi_get_device_ip(int card_id, int device_id, enum dcmi_port_type input_type, int port_id,
                       struct dcmi_ip_addr *ip, struct dcmi_ip_addr *mask);
int dcmi_get_device_info(int card_id, int device_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf,
                         unsigned int *size);
int dcmi_create_vdevice(int card_id, int device_id, struct dcmi_create_vdev_res_stru *vdev,
                        struct dcmi_create_vdev_out *out);
int dcmi_set_destroy_vdevice(int card_id, int device_id, unsigned int vdevid);
/* The vNPU mode, 0 docker (container) and 1 VM: dcmi_interface_api.h of
 * the CANN driver source (verylucky01/driver e29d066,
 * src/custom/include/dcmi_interface_api.h:2233-2235). */
int dcmi_set_vdevice_mode(int mode);
int dcmi_get_vdevice_mode(int *mode);
/* The driver's version string (dcmi_interface_api.h:2005, MAX_VER_LEN 255). */
#define MAX_VER_LEN 255
int dcmi_get_driver_version(char *driver_ver, unsigned int len);

/*
 * Telemetry (the chip metrics of the node agent): the prototypes of
 * dcmi_interface_api.h in Ascend/mind-cluster (commit 22bb3d98,
 * component/ascend-common/devmanager/dcmi/dcmi_interface_api.h lines 604,
 * 611 and 626). input_type 2 is the AI core (mind-cluster
 * devmanager/common/constants.go: AICore = DeviceType{Code: 2}); power is
 * in 0.1 W (dcmi.go DcGetDevicePowerInfo multiplies by ReduceTenth).
 */
#define DCMI_UTILIZATION_AICORE 2
int dcmi_get_device_power_info(int card_id, int device_id, int *power);
int dcmi_get_device_temperature(int card_id, int device_id, int *temperature);
int dcmi_get_device_utilization_rate(int card_id, int device_id, int input_type, unsigned int *utilization_rate);
/* The card's power as its MCU reports it, 0.1 W (dcmi_interface_api.h at
 * mind-cluster 22bb3d98, line 819; verylucky01/driver e29d066
 * src/custom/include/dcmi_interface_api.h:3688). */
int dcmi_mcu_get_power_info(int card_id, int *power);

/*
 * DCMI v2, the Ascend 950's API (the library's DCMI_VERSION_2 build): one
 * logic id (dev_id) per chip instead of card and device. Prototypes and
 * struct dcmi_board_info as the driver source's public header declares
 * them (verylucky01/driver e29d066, src/custom/include/dcmi_interface_api.h:
 * 119-124, 2408, 2443, 2451, 2467, 2491, 2508, 2594-2595, 2603, 2621, 2643,
 * 2808, 2822, 2849, 2858, 2903, 2984-2985) and the Ascend 950 DCMI API reference
 * (docs/en/Ascend_950_DCMI_API).
 */
struct dcmi_board_info {
    unsigned int board_id;
    unsigned int pcb_id;
    unsigned int bom_id;
    unsigned int slot_id;
};

int dcmiv2_init(void);
int dcmiv2_get_device_list(int *device_list, int *device_cnt, int list_len);
int dcmiv2_get_chip_phy_id_by_dev_id(int dev_id, unsigned int *phyid);
int dcmiv2_get_device_chip_info(int dev_id, struct dcmi_chip_info_v2 *chip_info);
int dcmiv2_get_device_hbm_info(int dev_id, struct dcmi_hbm_info *hbm_info);
int dcmiv2_get_device_pcie_info(int dev_id, struct dcmi_pcie_info_all *pcie_info);
int dcmiv2_get_device_health(int dev_id, unsigned int *health);
int dcmiv2_get_device_error_code_list(int dev_id, int *error_count, unsigned int *error_code_list,
                                      unsigned int list_len);
int dcmiv2_get_topo_info_by_device_id(int dev_id1, int dev_id2, int *topo_type);
int dcmiv2_get_device_info(int dev_id, enum dcmi_main_cmd main_cmd, unsigned int sub_cmd, void *buf,
                           unsigned int *size);
int dcmiv2_get_driver_version(char *driver_ver, unsigned int len);
int dcmiv2_get_device_board_info(int dev_id, struct dcmi_board_info *board_info);
int dcmiv2_get_mainboard_id(int dev_id, unsigned int *mainboard_id);
int dcmiv2_get_device_power_info(int dev_id, int *power_info);
int dcmiv2_get_device_temperature(int dev_id, int *temperature);
int dcmiv2_get_device_utilization_rate(int dev_id, int input_type, unsigned int *utilization_rate);

#endif
